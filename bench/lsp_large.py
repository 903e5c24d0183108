"""`turnflow lsp` on a document of N small workflow blocks (issue 25): a real client
(tests/test_lsp.py's Session) opens it, then times hover, document symbols (twice: the second
is answered from the kept answer), completion and hover, and how long after the open the
diagnostics arrive; then the server's peak and current memory.

    PYTHONPATH=src python3 bench/lsp_large.py 40000
    PYTHONPATH=src python3 bench/lsp_large.py 2000 profile   # the server under cProfile (/tmp/server.prof)

Wall times: they include the client's decoding of the answers and the machine's load."""
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from lsprotocol import types as t  # noqa: E402
from test_lsp import Session, doc, pos  # noqa: E402
from test_lsp_scale import blocks as gen  # noqa: E402

n = int(sys.argv[1])
prof = len(sys.argv) > 2
if prof:
    import test_lsp
    orig = test_lsp.LanguageClient.start_io
    async def start_io(self, cmd, *args, **kw):
        return await orig(self, cmd, "-m", "cProfile", "-o", "/tmp/server.prof", *args, **kw)
    test_lsp.LanguageClient.start_io = start_io
text = gen(n)
s = Session(Path(tempfile.mkdtemp()))
t0 = time.monotonic()
uri = s.open("big.flow", text)
def timed(name, fn, timeout=600):
    t0 = time.monotonic()
    r = s.run(fn(), timeout)
    print(f"{name}: {time.monotonic() - t0:.2f} s wall", flush=True)
    return r
p0 = pos(text, f"a{n//2} -> b", 0, 1)
timed("hover-first", lambda: s.client.text_document_hover_async(t.HoverParams(text_document=doc(uri), position=p0)))
r = timed("symbols", lambda: s.client.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=doc(uri))))
print("  symbols:", len(r or []))
timed("symbols-again", lambda: s.client.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=doc(uri))))
p = pos(text, f"a{n//2} -> b", 0, 13)
r = timed("completion", lambda: s.client.text_document_completion_async(t.CompletionParams(text_document=doc(uri), position=p)))
print("  items:", [i.label for i in r.items][:5])
p = pos(text, f"a{n//2} -> b", 0, 1)
r = timed("hover", lambda: s.client.text_document_hover_async(t.HoverParams(text_document=doc(uri), position=p)))
print("  hover:", r.contents.value[:60].replace("\n"," ") if r else None)
t1 = time.monotonic()
ok = s.events[uri].wait(600)
print(f"diagnostics published: {ok} {time.monotonic() - t0:.2f} s after open", flush=True)
pid = s.client._server.pid
print("server", [row.strip() for row in open(f"/proc/{pid}/status") if row.startswith(("VmHWM", "VmRSS"))], flush=True)
s.close()
