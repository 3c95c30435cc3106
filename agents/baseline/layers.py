"""An item is never more important than its parent's layer lets it be seen (the baseline editor's parents).

An item inside a ``low`` parent is read as low, whatever its own weight: a
parcel the user raised to ``high`` inside "其他 3 条动态" would still count as
low. The kernel moves no existing item to another parent
(``unsupported_move``, contract §3.4), so the baseline raises the parent instead:
``Lifting.lift_parents`` gives every ancestor of a planned change at least
that change's weight, bundles included, before the budget fit, with a reason
that names the child.
"""

from __future__ import annotations

from fold_agents.baseline.output import Output
from fold_agents.baseline.plan import BUNDLES, MAX_LEVEL, Change, bundle_id
from fold_agents.baseline.rules import heavier

__all__ = ["Lifting"]


class Lifting(Output):
    """Parents raised to the weight of the heaviest child the batch plans."""

    def lift_parents(self) -> None:
        """A planned weight above an ancestor's raises that ancestor to it (see the module text)."""
        for change in list(self.changes.values()):
            if change.weight is None or change.parent is None:
                continue
            for ancestor in self.known.ancestors(change.parent):
                planned = self.changes.get(ancestor)
                weight = planned.weight if planned is not None and planned.weight else \
                    self.known.active[ancestor]["weight"]
                if heavier(weight, change.weight) == weight:
                    continue
                holder = self._holder(ancestor)
                holder.weight = change.weight
                holder.reason = self.words("parent_raised", item=change.id, weight=change.weight)

    def _holder(self, item_id: str) -> Change:
        """The planned change of an active parent (a bundle keeps its naming)."""
        for name in BUNDLES:
            for level in range(1, MAX_LEVEL + 1):
                if bundle_id(name, level) == item_id:
                    return self._bundle(name, level)
        return self.change(item_id, "patch")
