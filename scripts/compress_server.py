#!/usr/bin/env python3
"""Reference compression server for ctxlab's compress step (needs a GPU; not run in CI).

Protocol (see activities/compress in the Go code):

    POST /compress  {"compressor": "llmlingua2", "text": "...", "rate": 0.4, "query": "issue text"}
    200             {"text": "...", "original_tokens": 1234, "compressed_tokens": 498}
    4xx / 5xx       {"error": "why"}      (429 and 5xx are retried by ctxlab; other 4xx are final)

rate is the share of tokens to keep. Compressors, each loaded on first use from its public Python package:

    llmlingua2     pip install llmlingua   (PromptCompressor, use_llmlingua2=True)
    longllmlingua  pip install llmlingua   (PromptCompressor, question-aware coarse-to-fine)
    longcodezip    pip install longcodezip (function-then-block compression by perplexity)
    swepruner      SWE-Pruner's line skimmer: set SWEPRUNER_ENTRY=module:function, a callable
                   (text, query, rate) -> str, as its project documents it

Run:  python3 scripts/compress_server.py --port 8100
Then: CTXLAB_COMPRESS_URL=http://HOST:8100 go run ./starter run specs/paper.jsonnet
"""

import argparse
import importlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_models = {}
_lock = threading.Lock()  # one model call at a time: GPU memory, not CPU, is the limit


def _llmlingua(llmlingua2):
    from llmlingua import PromptCompressor

    if llmlingua2:
        return PromptCompressor(
            model_name=os.environ.get(
                "LLMLINGUA2_MODEL", "microsoft/llmlingua-2-xlm-roberta-large-meetingbank"
            ),
            use_llmlingua2=True,
        )
    return PromptCompressor(model_name=os.environ.get("LONGLLMLINGUA_MODEL", "NousResearch/Llama-2-7b-hf"))


def _model(name):
    if name not in _models:
        if name == "llmlingua2":
            _models[name] = _llmlingua(True)
        elif name == "longllmlingua":
            _models[name] = _llmlingua(False)
        elif name == "longcodezip":
            from longcodezip import LongCodeZip

            _models[name] = LongCodeZip(model_name=os.environ.get("LONGCODEZIP_MODEL", "Qwen/Qwen2.5-Coder-7B-Instruct"))
        elif name == "swepruner":
            entry = os.environ.get("SWEPRUNER_ENTRY")
            if not entry:
                raise LookupError("swepruner: set SWEPRUNER_ENTRY=module:function")
            mod, fn = entry.split(":", 1)
            _models[name] = getattr(importlib.import_module(mod), fn)
        else:
            raise LookupError("unknown compressor %r" % name)
    return _models[name]


def _count(text):
    # Token counts in the compressor's own terms when it reports them; whitespace words otherwise.
    return len(text.split())


def compress(req):
    name, text, rate, query = req["compressor"], req["text"], float(req["rate"]), req.get("query") or ""
    if not 0 < rate <= 1:
        raise ValueError("rate %r must be in (0, 1]" % rate)
    m = _model(name)
    if name == "llmlingua2":
        r = m.compress_prompt(text, rate=rate, force_tokens=["\n"])
        return r["compressed_prompt"], r.get("origin_tokens", _count(text)), r.get("compressed_tokens")
    if name == "longllmlingua":
        r = m.compress_prompt(
            text.split("\n\n"),
            question=query,
            rate=rate,
            condition_in_question="after_condition",
            reorder_context="original",
            dynamic_context_compression_ratio=0.3,
            condition_compare=True,
            rank_method="longllmlingua",
        )
        return r["compressed_prompt"], r.get("origin_tokens", _count(text)), r.get("compressed_tokens")
    if name == "longcodezip":
        r = m.compress_code_file(code=text, query=query, instruction="", rate=rate, rank_only=False)
        out = r.get("compressed_code", "")
        return out, r.get("original_tokens", _count(text)), r.get("compressed_tokens", _count(out))
    out = m(text, query, rate)
    return out, _count(text), _count(out)


class Handler(BaseHTTPRequestHandler):
    def _send(self, status, body):
        b = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_POST(self):
        if self.path != "/compress":
            return self._send(404, {"error": "POST /compress only"})
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with _lock:
                text, n_in, n_out = compress(req)
        except (KeyError, ValueError, LookupError) as e:
            return self._send(400, {"error": str(e)})
        except Exception as e:  # out of memory, CUDA errors: worth a retry
            return self._send(503, {"error": "%s: %s" % (type(e).__name__, e)})
        self._send(200, {"text": text, "original_tokens": n_in, "compressed_tokens": n_out or _count(text)})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8100)
    a = ap.parse_args()
    ThreadingHTTPServer((a.host, a.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
