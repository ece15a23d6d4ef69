"""Importing hand-written vLLM units into profiles (docs/unit-import.md): the command line
and the unit lines mapped to fields (`mapping`), what no field describes kept verbatim,
and the check that the rendered unit runs the same commands (`sameness`)."""
