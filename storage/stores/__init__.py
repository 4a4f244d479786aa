"""The stores beside each other: LanceDB, the source of truth (`lance_store`), and what is derived
from it and rebuildable: the keyword index (`keyword_index`), the vector matrix (`vector_matrix`) and
the read model every read shows chats from (`catalog`)."""
