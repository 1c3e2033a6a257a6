"""The errors the library raises. Only the CLI layer turns them into output and exit codes.

Each error carries its class of outcome, ``outcome``: ``"bad_input"`` (the user asked for something that cannot
be: a bad option value, an unknown flow, an invalid flow file) or ``"failed"`` (a check found a problem, or an
operation could not be done: a cluster unreachable, a deploy that failed). ``async_triggers.cli.exit_codes`` maps
outcomes to exit codes (``EXIT_CODES`` here, which the Spark jobs use too; the CLI adds its usage errors).
"""

BAD_INPUT = "bad_input"
FAILED = "failed"
# outcome -> exit code; an interrupt exits 130
EXIT_CODES = {FAILED: 1, BAD_INPUT: 2}
INTERRUPTED = 130


def exit_code_of(error: BaseException) -> int:
    """The exit code a command ends with after ``error`` (ours carry their outcome; anything else failed)."""
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED
    return EXIT_CODES[getattr(error, "outcome", FAILED)]


class AsyncTriggersError(Exception):
    """Base of every error the control plane raises on purpose."""
    outcome = FAILED


class ConfigError(AsyncTriggersError):
    """A setting, a file or an argument is invalid."""
    outcome = BAD_INPUT


class MissingExtra(AsyncTriggersError):
    """A command needs a part of an extra that is not installed (async_triggers.extras): the install, not the input."""


class ValidationError(AsyncTriggersError):
    """A flow does not fit the live schema or the rules; names the flow and the culprit."""
    outcome = BAD_INPUT

    def __init__(self, flow: str, message: str):
        self.flow = flow
        super().__init__(f"flow '{flow}': {message}")


class UnknownFlowError(AsyncTriggersError):
    """A command named a flow that is not deployed."""
    outcome = BAD_INPUT

    def __init__(self, flows, deployed=()):
        self.flows = tuple(flows)
        names = ", ".join(f"'{f}'" for f in self.flows)
        known = ", ".join(sorted(deployed)) or "none"
        super().__init__(f"no deployed flow named {names} (deployed: {known})")


class DeployError(AsyncTriggersError):
    """Deploying or dropping a flow failed."""


class ClusterError(AsyncTriggersError):
    """Installing, starting or reaching a cluster failed."""


class ConnectionFailed(ClusterError):
    """The cluster could not be reached, or refused our credentials."""


class VerifyError(AsyncTriggersError):
    """A verification job could not run (not: it found rows that differ)."""


class BackfillError(AsyncTriggersError):
    """A backfill could not apply a flow to the existing rows of its source (names the flow)."""


class DeriveError(VerifyError, BackfillError):
    """A flow's derived rows cannot be computed from its specification (a Java handler, a malformed reference).
    Both jobs that compute them (spark_jobs.derive) fail with it: a verification and a backfill alike."""


class FlowPausedError(AsyncTriggersError):
    """A flow is paused, so what was asked (waiting for it to drain) would never happen."""

    def __init__(self, flows):
        self.flows = list(flows)
        names = ", ".join(f"'{f}'" for f in self.flows)
        resume = " ".join(self.flows)
        super().__init__(f"flow {names} is paused: its tasks wait in the backup maps and none runs until "
                         f"`ctl trigger resume {resume}`" if len(self.flows) == 1 else
                         f"flows {names} are paused: their tasks wait in the backup maps and none runs until "
                         f"`ctl trigger resume` of each")


class CheckFailed(AsyncTriggersError):
    """A check ran and found a problem (missing rows, a node not ready)."""


class FlowNotEmpty(AsyncTriggersError):
    """A destructive command would throw away tasks or dead letters it was not told to discard."""


class NotConfirmed(AsyncTriggersError):
    """A discard was not confirmed (no terminal to ask, and no --yes)."""
    outcome = BAD_INPUT
