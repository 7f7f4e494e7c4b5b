"""The errors a service raises for a request the data does not allow."""


class ServiceError(Exception):
    """A request that the data does not allow; the message is meant for the user."""


class StepConflict(ServiceError):
    """A step with this (run, seq) is stored already with different content: the sender reused a number."""


class UnconfirmedSuccess(ServiceError):
    """A `succeeded` status event that no stored evaluation of the run confirms: the event is refused and the run
    is failed with the reason (docs/protocol.md 1.2)."""


class QuestionAlreadyDecided(ServiceError):
    pass


class QuestionClosed(ServiceError):
    """A question of a run that has finished: nobody waits on its decision, and no worker holds the run to act
    on one. It is closed undecided; a reviewer's decision is refused (409), nothing stored, nothing sent."""
