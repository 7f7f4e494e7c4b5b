"""The errors a service raises for a request the data does not allow."""


class ServiceError(Exception):
    """A request that the data does not allow; the message is meant for the user."""


class StepConflict(ServiceError):
    """A step with this (run, seq) is stored already with different content: the sender reused a number."""


class QuestionAlreadyDecided(ServiceError):
    pass
