"""Hybrid search: a keyword and a vector leg under the same filters, fused, grouped by chat, shown in context.

The stages, in the order a search runs them: `legs` (what each leg ranks and the evidence it gives),
`fusion` (weighted RRF and the boosts that ship), `engine` (`SearchEngine`: ranking, then the chats
chosen by strength), `shown` (what a result shows of each chat).
"""

from storage.search.engine import NO_FILTERS, SEARCH_DEPTH, SEARCH_MODES, Ranking, SearchEngine
from storage.search.fusion import PLAIN_RRF, SHIPPED, Fusion
from storage.search.shown import RankedUnit

__all__ = [
    "NO_FILTERS",
    "PLAIN_RRF",
    "SEARCH_DEPTH",
    "SEARCH_MODES",
    "SHIPPED",
    "Fusion",
    "RankedUnit",
    "Ranking",
    "SearchEngine",
]
