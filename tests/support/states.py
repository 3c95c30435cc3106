"""Reading a §8 state document the way geometry tests need it (overview, Pinboard)."""

from __future__ import annotations

from collections.abc import Mapping


def views_and_members(document: Mapping) -> tuple[dict, dict]:
    """Every active item's view by id, and the ids of each layer's members (key None = root) in rank order."""
    views: dict = {}
    members: dict = {}

    def walk(layer, parent):
        for view in layer["items"]:
            views[view["id"]] = view
            members.setdefault(parent, []).append(view["id"])
            if view["children"]:
                walk(view["children"], view["id"])

    walk(document["root"], None)
    return views, members
