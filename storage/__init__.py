"""Data structures as Redis lays them out (listpack.c, rax.c, t_stream.c, db.c): pure Python
over bytes, with no event loop, no sockets and nothing of the server. Imports nothing of
ours but storage itself."""
