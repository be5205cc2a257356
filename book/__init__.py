"""The self-study book: ``python -m book.build`` (or ``make book``)."""
