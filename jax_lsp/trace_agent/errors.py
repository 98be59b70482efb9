"""The agent's one error: a module, a policy, an example or a trace that could not be used."""

from __future__ import annotations


class AgentError(Exception):
    """Why a request could not be answered; ``status`` says which way, and ``path``/``line`` where.

    ``error_type`` names the user's exception class where there is one (a ``policy_error``'s
    ``TypeError``), else it is the status."""

    def __init__(self, status, message, path=None, line=None, error_type=None):
        super().__init__(message)
        self.status = status
        self.path = path
        self.line = line
        self.error_type = error_type or status

    def result(self):
        """The agent's answer for this error (a policy's own exception is named in the message)."""
        message = f"{self.error_type}: {self}" if self.status == "policy_error" else str(self)
        return {
            "status": self.status,
            "message": message,
            "error": {"type": self.error_type, "text": str(self), "path": self.path, "line": self.line},
        }
