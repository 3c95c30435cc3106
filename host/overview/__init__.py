"""The visual overview (contract §13): ``layout`` (pure geometry and diff), ``treemap``,
``cardtext``, ``page`` (HTML from the tool's own templates), ``browser`` and ``render``
(headless Chromium → PNG and render.json). ``statediff`` compares two states for the marks.
"""
