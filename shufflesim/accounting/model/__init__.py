"""Values the accountant consumes and returns: mechanism descriptions (:mod:`.mechanism`), the answer types
(:mod:`.results`) and the validation of the questions put to an accountant (:mod:`.queries`)."""
