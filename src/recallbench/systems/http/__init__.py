"""The ``http`` system: hosted memory APIs from a config file, and a reference server.

``config`` parses and checks the configuration (secrets as ``${NAME}`` references), ``paths``
reads values out of JSON responses, ``system`` is :class:`HttpSystem`, ``reference`` the
reference memory server (``recallbench serve-memory``). See ``docs/hosted.md``.
"""
