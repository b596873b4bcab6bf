"""A streamed faithful run estimated to be long names the fast engine when the protocol has one (issue 21:
a researcher who asked for 1000 trials at n = 1e9 learns before waiting that a cost-free-in-n engine exists)."""

from __future__ import annotations

import pytest

from shufflesim.cli import simulate


@pytest.mark.parametrize("threshold, shown", [(0.0, True), (1e12, False)])
def test_long_streamed_run_names_the_fast_engine(capsys, monkeypatch, threshold, shown):
    from shufflesim.cli.main import main

    monkeypatch.setattr(simulate, "LONG_STREAM_SECONDS", threshold)
    code = main(["simulate", "krr", "--k", "4", "--gamma", "0.5", "--n", "2000", "--trials", "2", "--seed", "1",
                 "--chunk", "500"])
    err = capsys.readouterr().err
    assert code == 0 and "faithful engine streamed in chunks of 500 users" in err
    assert ("--engine fast" in err) is shown


@pytest.mark.parametrize("engine", ["fast", "auto"])
def test_chunk_with_another_engine_is_refused_in_one_line(capsys, engine):
    from shufflesim.cli.main import main

    code = main(["simulate", "krr", "--k", "4", "--gamma", "0.5", "--n", "2000", "--trials", "2", "--engine", engine,
                 "--chunk", "500"])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == ""
    assert cap.err.startswith("error: --chunk applies to the faithful engine only") and cap.err.count("\n") == 1
    assert "krr's fast engine" in cap.err


def test_chunk_with_auto_on_a_protocol_without_a_fast_engine_is_accepted():
    from shufflesim.cli.simulate import _fast_chosen
    from shufflesim.pipeline.protocol import Protocol

    class NoFast(Protocol):  # the base class's sample_fast: no fast engine
        pass

    assert not _fast_chosen(NoFast, "auto") and _fast_chosen(NoFast, "fast") and not _fast_chosen(NoFast, "faithful")


def test_the_faithful_memory_check_does_not_refuse_the_fast_engine(capsys, monkeypatch):
    # the faithful engine's n*r messages do not fit under the limit; the fast engine allocates none of them, so
    # only the faithful run is refused (it used to refuse both, advising --engine fast to a fast run)
    from shufflesim.cli.main import main

    monkeypatch.setenv("SHUFFLESIM_MEMORY_LIMIT", "256M")
    base = ["simulate", "cheu-sum", "--n", "100000", "--eps", "1", "--trials", "3", "--seed", "1"]
    assert main(base + ["--engine", "faithful"]) == 2
    assert "use --engine fast" in capsys.readouterr().err
    assert main(base + ["--engine", "fast"]) == 0
    assert "mse" in capsys.readouterr().out
