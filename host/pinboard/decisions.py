"""What the Pinboard shows of decision frames (contract §3.6, §12). Pure functions.

* ``frame_page`` — a frame as the item page shows it: each option with its
  consequence, which one is recommended and which one the fallback takes,
  ``decide_by`` and the evidence.
* ``frame_seen`` — the frame a digest named, found in the item's post-images
  (the records of ``history --item``): what the user had on screen when a
  stale answer came.
* ``frame_changes`` — what differs between that frame and the current one,
  as short English templates with values (the page says them in its
  language): the question, options added, removed or relabelled, their
  consequences, the recommendation, the fallback, the time, the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from fold_core.kernel.decision import frame_digest

__all__ = ["frame_changes", "frame_page", "frame_seen"]


def frame_page(frame: Mapping) -> dict:
    """The frame with its options marked (``recommended``, ``fallback``) for the template."""
    recommended = frame.get("recommended")
    fallback = frame.get("fallback") or {}
    options = [{"consequence": None, **option, "recommended": option["id"] == recommended,
                "fallback": option["id"] == fallback.get("option")} for option in frame["options"]]
    labels = {option["id"]: option["label"] for option in frame["options"]}
    return {"recommended": None, "basis": None, "fallback": None, "decide_by": None, "gap": None,
            **frame, "options": options, "recommended_label": labels.get(recommended),
            "fallback_label": labels.get(fallback.get("option"))}


def frame_seen(records: Iterable[Mapping], item_id: str, digest: str) -> dict | None:
    """The frame of ``item_id`` whose digest is ``digest`` in its post-images, the latest such; or None."""
    found = None
    for record in records:
        for change in record.get("changes") or ():
            post = change.get("item") or {}
            frame = post.get("decision") if post.get("id") == item_id else None
            if frame and frame_digest(frame) == digest:
                found = frame
    return found


def frame_changes(before: Mapping | None, after: Mapping,
                  when: Callable[[object], str] = str) -> list[tuple[str, dict]]:
    """``[(template, values)]``: what changed from ``before`` (None: not found any more) to ``after``.

    ``when`` shows an instant (the page's local time in words).
    """
    if before is None:
        return [("The question was replaced since you opened the page.", {})]
    changes: list[tuple[str, dict]] = []
    if before.get("question") != after.get("question"):
        changes.append(("The question was: {old}", {"old": before.get("question")}))
    old = {option["id"]: option for option in before.get("options") or ()}
    new = {option["id"]: option for option in after.get("options") or ()}
    for option_id, option in new.items():
        was = old.get(option_id)
        if was is None:
            changes.append(("New option: {label}", {"label": option["label"]}))
            continue
        if was.get("label") != option.get("label"):
            changes.append(("The option {old} is now called {label}", {"old": was["label"], "label": option["label"]}))
        if was.get("consequence") != option.get("consequence"):
            changes.append(("The consequence of {label} changed; it was: {old}",
                            {"label": option["label"], "old": was.get("consequence") or "—"}))
    for option_id, option in old.items():
        if option_id not in new:
            changes.append(("The option {label} is gone", {"label": option["label"]}))
    if before.get("recommended") != after.get("recommended"):
        label = {**old, **new}.get(before.get("recommended"), {}).get("label") if before.get("recommended") else None
        changes.append(("The recommendation changed; it was: {old}", {"old": label or "—"}))
    if (before.get("fallback") or {}) != (after.get("fallback") or {}):
        changes.append(("What happens without an answer changed; it was: {old}",
                        {"old": (before.get("fallback") or {}).get("summary") or "—"}))
    if before.get("decide_by") != after.get("decide_by"):
        changes.append(("The time to decide by changed; it was: {old}", {"old": when(before["decide_by"])
                                                                         if before.get("decide_by") else "—"}))
    if before.get("evidence") != after.get("evidence") or before.get("gap") != after.get("gap"):
        changes.append(("What is known changed; it was: {old}",
                        {"old": " — ".join(part for part in (before.get("evidence"), before.get("gap")) if part)}))
    if not changes:  # the basis alone, or a spelling the digest sees
        changes.append(("The reasoning behind the question changed.", {}))
    return changes
