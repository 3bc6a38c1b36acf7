"""Container ids of the fault tests' fleets (nemesis_test.py and
server_crash_test.py): c-<region>-<j> is the fleet, x-<region>-<j> the churn
that is deleted and registered again; the region is read back from the id."""


def fleet_id(r, j):
    return "c-%s-%d" % (r, j)


def churn_id(r, j):
    return "x-%s-%d" % (r, j)


def region_of(cid):
    return cid.split("-")[1]
