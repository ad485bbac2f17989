"""The command line: ``starter.py`` parses, ``cli/commands/`` holds one module per command.

A command module has two functions and nothing else is asked of it: ``register(subparsers)``
adds its parser to ``starter.py``'s and sets that parser's ``run`` default to the module's
``run`` (``parser.set_defaults(run=run)``); ``async run(args) -> int`` does the command and
returns the exit status, raising ``cli.tasks.UserError`` for what the person can fix (one
line, status 2). A new command is a new module listed in ``cli.commands.COMMANDS``; the rest
of ``cli/`` is what the commands share (task input, following, rendering, workers).
"""
