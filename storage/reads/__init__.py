"""What reads return and how: the result models (`results`), a chat's row as results show it
(`chat_meta`), pages of a chat (`read_chat`), chats by time and the store's totals (`listing`), the
store less what a delete committed to (`hiding`), and the store as the plain format (`export`)."""
