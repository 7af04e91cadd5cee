"""Whose fault? The one mapping from how an episode ended to its `outcome` and `end_reason`.

The agent (and its arm: its model, its expert) answers for the turn limit, the deadline, a context
overflow, a content-filter refusal, format errors, a final DB its verifier fails or raises on, and a
judge its answer left without a classification (twice). An episode nothing could judge (no verifier,
no --judge) is `unverified`: no one's fault, and out of the rates.
Only what no agent could cause is `error`: an endpoint out of retries, a world worker that died or
hung, a verifier the sandbox could not run, a verdict the dataset or the judge could not give, and
our own (or a plug-in's) bugs. docs/runs.md ("Outcomes") is the table this code implements.
"""

from __future__ import annotations

from dataclasses import dataclass

from awm_runtime._errors import AwmError, ModelError, VerifierError, WorldError
from awm_runtime._types import EndReason, ErrorInfo, Outcome, Verdict

# A model refusing the episode's own prompt is deterministic: the arm's doing, never an outage.
AGENT_MODEL_KINDS: dict[str, EndReason] = {"context": "context_overflow", "content_filter": "content_filter"}
AGENT_ROLES = ("policy", "expert")
# Verdicts that are no judgement of the agent's work.
_VERDICT_ERRORS: dict[str, EndReason] = {"verifier_error": "verifier_error", "judge_error": "judge_error"}


@dataclass(frozen=True, slots=True)
class Ending:
    """How an episode stopped before its verdict: the reason, and the error when it is infrastructure's."""

    reason: EndReason
    error: ErrorInfo | None = None
    detail: str | None = None


def error_info(exc: BaseException) -> ErrorInfo:
    cls = exc.error_class if isinstance(exc, AwmError) else f"Unexpected.{type(exc).__name__}"
    return ErrorInfo(error_class=cls, message=str(exc) or type(exc).__name__)


def ending_for(exc: BaseException) -> Ending:
    """The ending an exception that escaped the episode's play stands for."""
    if isinstance(exc, ModelError) and exc.role in AGENT_ROLES and exc.kind in AGENT_MODEL_KINDS:
        return Ending(AGENT_MODEL_KINDS[exc.kind], detail=str(exc) or exc.kind)
    info = error_info(exc)
    if isinstance(exc, ModelError):
        return Ending("model_error", info)
    if isinstance(exc, WorldError):
        return Ending("world_error", info)
    if isinstance(exc, VerifierError):
        return Ending("verifier_error", info)
    return Ending("runtime_error", info)


def settle(ending: Ending, verdict: Verdict) -> tuple[Outcome, EndReason, ErrorInfo | None]:
    """The record's outcome, end_reason and error, from how play ended and what the verifier said."""
    if ending.error is not None:
        return "error", ending.reason, ending.error
    if ending.reason == "format_error":
        return "format_error", "format_error", None
    if verdict.result in _VERDICT_ERRORS:
        reason = _VERDICT_ERRORS[verdict.result]
        return "error", reason, ErrorInfo(error_class=f"VerifierError.{verdict.result}",
                                          message=verdict.error or verdict.result)
    if verdict.result == "no_verifier":  # nothing could judge it: no one's fault, and no judgement either
        return "unverified", "no_verifier", None
    if verdict.result in ("verifier_raised", "judge_unclassified"):
        return "incomplete", verdict.result, None
    if ending.reason in ("final_answer", "max_turns") and verdict.complete:
        return "complete", ending.reason, None
    return "incomplete", ending.reason, None
