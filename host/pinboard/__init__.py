"""The Pinboard (contract §12): the state as a live web page, with the user's answers.

``foldctl serve`` runs it (``server``); ``app`` builds the ASGI app, ``board``
and ``pages`` compute what the pages show (pure), ``inputs`` takes the
user's annotations and feedback through the commands' own code paths,
``security`` guards every request. Starlette, uvicorn and Jinja2 are imported
only by the modules that serve; importing this package costs nothing.
"""
