"""Samples for the linear-algebra rules: matrix products, fused multiply-adds, einsum."""

from .sampling import S, r, zd

BROADCASTING = {"matmul", "addmm", "baddbmm", "einsum"}


def _e(equation, *shapes, tags=()):
    return S(*(r(*s) for s in shapes), equation=equation, tags=tags)


SAMPLES = {
    "mm": [S(r(3, 4), r(4, 5)), S(r(1, 3), r(3, 1)), S(r(0, 3), r(3, 4), tags="empty"),
           S(r(2, 0), r(0, 3), tags="empty")],
    "bmm": [S(r(2, 3, 4), r(2, 4, 5)), S(r(0, 3, 4), r(0, 4, 2), tags="empty"),
            S(r(2, 3, 0), r(2, 0, 4), tags="empty")],
    "dot": [S(r(4), r(4)), S(r(1), r(1)), S(r(0), r(0), tags="empty")],
    "vdot": [S(r(4), r(4)), S(r(0), r(0), tags="empty")],
    "mv": [S(r(3, 4), r(4)), S(r(0, 4), r(4), tags="empty"), S(r(3, 0), r(0), tags="empty")],
    "matmul": [
        S(r(4), r(4)), S(r(3, 4), r(4)), S(r(4), r(4, 5)), S(r(3, 4), r(4, 5)),
        S(r(2, 3, 4), r(4)), S(r(4), r(2, 4, 5), tags="broadcast"),
        S(r(2, 3, 4), r(4, 5), tags="broadcast"), S(r(3, 4), r(2, 4, 5), tags="broadcast"),
        S(r(2, 3, 4), r(2, 4, 5)), S(r(1, 3, 4), r(2, 4, 5), tags="broadcast"),
        S(r(2, 1, 3, 4), r(5, 4, 2), tags="broadcast"), S(r(3, 1, 2, 4), r(4), tags="broadcast"),
        S(r(0, 3, 4), r(4, 2), tags="empty broadcast"), S(r(2, 3, 0), r(0, 5), tags="empty broadcast"),
        S(r(0), r(2, 0, 3), tags="empty broadcast"),
    ],
    "addmm": [S(r(3, 4), r(3, 2), r(2, 4)), S(r(4), r(3, 2), r(2, 4), tags="broadcast"),
              S(r(3, 1), r(3, 2), r(2, 4), beta=0.5, alpha=2.0, tags="broadcast"),
              S(r(3, 4), r(3, 2), r(2, 4), beta=0, alpha=-1.5),
              S(zd(), r(3, 2), r(2, 4), tags="0d broadcast"),
              S(r(0, 4), r(0, 2), r(2, 4), tags="empty"), S(r(3, 4), r(3, 0), r(0, 4), tags="empty")],
    "baddbmm": [S(r(2, 3, 4), r(2, 3, 5), r(2, 5, 4)), S(r(3, 4), r(2, 3, 5), r(2, 5, 4), tags="broadcast"),
                S(r(1, 3, 1), r(2, 3, 5), r(2, 5, 4), beta=-1.0, alpha=0.5, tags="broadcast"),
                S(zd(), r(2, 3, 5), r(2, 5, 4), tags="0d broadcast"),
                S(r(0, 3, 4), r(0, 3, 5), r(0, 5, 4), tags="empty"),
                S(r(2, 3, 4), r(2, 3, 0), r(2, 0, 4), tags="empty")],
    "einsum": [
        _e("ij,jk->ik", (3, 4), (4, 5)), _e("ij,jk", (3, 4), (4, 5)), _e("ij,kj->ki", (3, 4), (2, 4)),
        _e("ii->i", (3, 3)), _e("ii", (3, 3)), _e("ij->j", (3, 4)), _e("ij->ji", (3, 4)),
        _e("ij", (3, 4)), _e("ijk->", (2, 3, 4)), _e("i,j->ij", (3,), (4,)),
        _e("i,i->", (4,), (4,)), _e("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
        _e("...ij,...jk->...ik", (2, 3, 4), (4, 5), tags="broadcast"),
        _e("...ij,...jk", (2, 1, 3, 4), (5, 4, 2), tags="broadcast"),
        _e("...ij->ij", (5, 2, 3)), _e("...,...->...", (2, 3), (3,), tags="broadcast"),
        _e("iij->j", (3, 3, 2)), _e("iji->j", (3, 2, 3)), _e("iii->i", (3, 3, 3)), _e("ii,i->i", (3, 3), (3,)),
        _e("ij,ij->ij", (1, 4), (3, 4), tags="broadcast"), _e("ij,ij->i", (2, 3), (2, 1), tags="broadcast"),
        _e("ii,i->i", (1, 1), (3,), tags="broadcast"), _e("ij,jk->ik", (2, 1), (3, 4), tags="broadcast"),
        _e("ij,k->", (2, 3), (4,)), _e("ij,i->j", (2, 3), (2,)), _e("Ab,bA", (2, 3), (3, 2)),
        _e("bn,anm,bm->ba", (2, 3), (4, 3, 5), (2, 5)), _e("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
        S(zd(), r(3), equation=",i->i", tags="0d"), S(zd(), zd(), equation=",->", tags="0d"),
        S(zd(), equation="...->...", tags="0d"),
        _e("ij,jk->ik", (0, 3), (3, 4), tags="empty"), _e("ij,jk->ik", (2, 0), (0, 4), tags="empty"),
        _e("ii->", (0, 0), tags="empty"),
    ],
}

EXEMPT = {
    "mm": {"0d": "needs matrices"}, "bmm": {"0d": "needs batches of matrices"},
    "dot": {"0d": "needs vectors (its result is 0-d)"}, "vdot": {"0d": "needs vectors (its result is 0-d)"},
    "mv": {"0d": "needs a matrix and a vector"}, "matmul": {"0d": "operands must be at least 1-D"},
}
