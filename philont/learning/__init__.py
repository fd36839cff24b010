"""The self-learning loop: reflection that writes skills, extraction of facts and notes, session
summaries, the idle consolidator and verify-then-condense."""
