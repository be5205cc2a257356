"""The course served to a class: JupyterHub with nbgrader's exchange (docs/teaching.md).

``prepare`` builds the hub's root folder from this checkout, ``accounts`` makes the
instructor's and the students' Unix accounts, ``exchange`` holds the collect step
that copies only what the submitting student wrote, and ``jupyterhub_config.py``
is the hub itself.
"""
