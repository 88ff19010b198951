"""RESP2 / RESP3, sans-IO: bytes in, argv lists out (reader); reply values in, bytes out
(encoder). Imports nothing of ours and no event loop."""
