"""The self-learning loop: reflection that writes skills, extraction of facts and notes, session
summaries, the idle consolidator and verify-then-condense.

A host inside its own unit of work uses :class:`Learner`; a background job uses
:class:`Consolidator` (``philont consolidate``), which never keeps a transaction open while the
model thinks. Models plug in through :mod:`philont.llm`.
"""

from philont.learning.config import ConsolidatorConfig, LearningConfig
from philont.learning.consolidate import Consolidator, read_cursor
from philont.learning.learner import Learner
from philont.learning.verify import CaseBook, Judge, JudgeResult, ModelJudge
from philont.learning.window import Run, ToolCall, Window

__all__ = [
    "CaseBook",
    "Consolidator",
    "ConsolidatorConfig",
    "Judge",
    "JudgeResult",
    "Learner",
    "LearningConfig",
    "ModelJudge",
    "Run",
    "ToolCall",
    "Window",
    "read_cursor",
]
