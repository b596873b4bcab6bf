"""Mechanism descriptions."""
