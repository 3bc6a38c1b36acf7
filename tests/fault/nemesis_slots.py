"""The nemesis tests' slots: which containers of the fleet hold several
sessions, and the check both checkers make of the holds on them (a slot is
never held twice at once, a container never holds more sessions than its
slots)."""

import collections

# Fleet containers c-<region>-<j> with more than one slot, by j; the churn's
# x-<region>-0 has 2. Every other container has 1, as before slots: the
# waiting pool's one container among them.
FLEET_SLOTS = {1: 2, 4: 3, 7: 8}
CHURN_SLOTS = {0: 2}
OVERLAP_SLACK_S = 0.05


def slots_of(cid):
    parts = cid.split("-")
    if len(parts) != 3 or not parts[2].isdigit():
        return 1
    table = FLEET_SLOTS if parts[0] == "c" else CHURN_SLOTS if parts[0] == "x" else {}
    return table.get(int(parts[2]), 1)


def check_holds(checker, holds, excused=lambda x, y: False, describe=None):
    """holds: dicts with sid, cid, slot, start and end (the client's view of
    each session's hold). Two holds of one slot that overlap are
    "overlapping holds"; a slot the container does not have is "slot out
    of range"; a hold that begins while the container's other
    holds already fill its slots is "container over its slots". excused(x,
    y) says when y's start inside x's hold is no fault (the container may
    have been judged dead meanwhile); describe(x, y) words the overlap."""
    by_cid = collections.defaultdict(list)
    for s in holds:
        if s["end"] > s["start"]:
            by_cid[s["cid"]].append(s)
    mono0 = checker.h.mono0
    for cid, lst in by_cid.items():
        lst.sort(key=lambda s: s["start"])
        slots = slots_of(cid)
        for i, y in enumerate(lst):
            if not 0 <= y.get("slot", 0) < slots:
                checker.v("slot out of range", "%s (%d slots): %s answered slot %d" % (
                    cid, slots, y["sid"], y.get("slot", 0)))
            during = [x for x in lst[:i] if x["sid"] != y["sid"] and
                      y["start"] < x["end"] - OVERLAP_SLACK_S and not excused(x, y)]
            for x in during:
                if x.get("slot", 0) == y.get("slot", 0):
                    checker.v("overlapping holds", describe(x, y) if describe else
                              "%s slot %d: %s held %.2f to %.2f, %s answered %.2f" % (
                                  cid, y.get("slot", 0), x["sid"], x["start"] - mono0,
                                  x["end"] - mono0, y["sid"], y["start"] - mono0))
            holders = {x["sid"] for x in during}
            if len(holders) + 1 > slots:
                checker.v("container over its slots",
                          "%s (%d slots): %s answered %.2f while %d sessions held it (%s)" % (
                              cid, slots, y["sid"], y["start"] - mono0, len(holders),
                              ", ".join(sorted(holders))))
