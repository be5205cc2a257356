"""The helper package of the RNN language-model course (DyNet).

Import order matters: call ``course.runtime.init(...)`` before importing
``course.lm`` (or ``dynet``), because DyNet reads its settings at import.
"""
__version__ = "0.1.0"
