"""`pastchats ui`: a page in the browser for the person whose chats these are.

`serving` (the loopback socket, the token, uvicorn), `app` (the routes), `guard` (the token gate, the
safety headers, the forms' secret), `markup` (HTML with every value escaped), `rendering` (chat text
as Markdown, raw HTML off), `context` (what pages are rendered with), one module per page (`search`,
`timeline`, `chat`, `forget`, `store`), `parts` (what several pages show) and `static/` (the one
stylesheet, script and icon, shipped in the package).
"""
