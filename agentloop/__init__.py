"""agentloop: the KernelSeek agent. A general-purpose coding agent (shell, file editor, evaluate) in a short loop,
a goal that only the harness can confirm, and questions the agent asks itself at decision points.

Plain Python (no Django): it runs on GPU hosts. Start with `python -m agentloop run --help`.
The events it emits and the worker's wire protocol are specified in docs/protocol.md.
"""

__version__ = "0.1.0"
