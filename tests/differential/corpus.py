"""The differential corpus: hand-picked traps plus the committed generated lines.

Every case becomes one `Type=oneshot` unit whose commands all run the argv dumper, so the
argv systemd really passes can be read back and compared with the linter's prediction.
Exec values are written with the token `<DUMPER>` for the dumper path (never produced by the
grammar), replaced when the unit text is built.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tests.differential.dumper import DUMPER

TOKEN = "<DUMPER>"
GENERATED = Path(__file__).with_name("generated_corpus.json")
UNIT_DIR = "/etc/systemd/system"

# Environment= lines shared by many cases: values with spaces, quotes, escapes, specifiers.
ENV_RICH = (
    'A=alpha "B=two words"',
    "'C=say \"hi\"' EMPTY=",
    '"SP=  lead  and  trail  " "Q=\'single quoted\' \\"dq\\" x"',
    "PCT=100%% UNIT=%n DOLLAR=$HOME BR=${A}",
    "ESC=a\\tb NL=line1\\nline2 HEXV=\\x41\\x42",
    "X=first X=second GLOB=*.txt",
    "1BAD=x bad-name=y =empty",
)


@dataclass(frozen=True)
class Case:
    """One unit: Environment= values, ExecStart= values (raw, maybe multi-line), options."""

    cid: str
    execs: tuple[str, ...]
    env: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # more [Service] lines (e.g. User=)
    instance: str | None = None  # a template instance (unit name diff-NNNN@<instance>)
    note: str = ""
    origin: str = "hand"

    def template_name(self, index: int) -> str:
        return f"diff-{index:04d}@.service" if self.instance is not None else self.unit(index)

    def unit(self, index: int) -> str:
        """The unit systemd starts (an instance for templates)."""
        if self.instance is not None:
            return f"diff-{index:04d}@{self.instance}.service"
        return f"diff-{index:04d}.service"

    def text(self, dumper: str = str(DUMPER)) -> str:
        lines = ["[Unit]", f"Description=differential {self.cid}", "", "[Service]"]
        lines.append("Type=oneshot")
        lines += list(self.extra)
        lines += [f"Environment={e}" for e in self.env]
        lines += [f"ExecStart={x.replace(TOKEN, dumper)}" for x in self.execs]
        return "\n".join(lines) + "\n"


@dataclass
class _Builder:
    cases: list[Case] = field(default_factory=list)

    def add(self, cid: str, *execs: str, env: tuple[str, ...] = ENV_RICH, **kw: object) -> None:
        self.cases.append(Case(cid, tuple(execs), env, **kw))  # type: ignore[arg-type]


def hand_cases() -> list[Case]:
    """Traps chosen by hand, one systemd rule (or combination) each."""
    b = _Builder()
    D = TOKEN
    # -- words and quoting -------------------------------------------------------------
    b.add("plain", f"{D} plain args here", env=())
    b.add("quotes", f"{D} \"double quoted arg\" 'single quoted arg'")
    b.add("quote-in-quote", f'{D} "it\'s" \'say "hi"\' "a\'b\'c" \'x""y\'')
    b.add("mid-word-quotes", f'{D} a"b c"d \'e\'f"g" ""x\'\' x""')
    b.add("escaped-quotes", f"{D} \"a\\\"b\" 'a\\'b' \"a\\'b\" 'a\\\"b'")
    b.add("escapes-in-single", f"{D} 'tab\\there' 'nl\\nx' 'bs\\\\x' '\\x41\\102'")
    b.add("escapes-in-double", f'{D} "tab\\there" "\\x41\\102\\u00e9" "\\s\\s"')
    b.add("c-escapes", f"{D} \\x41 \\101 \\u00e9 \\U0001F600 \\n \\t \\\\ \\s \\a \\b \\f \\r \\v")
    b.add("unknown-escapes", f"{D} \\q \\z a\\kb \\% \\$ \\8 \\9")
    b.add("unknown-escape-dollar", f"{D} \\$A \\${{A}} a\\$b")
    b.add("raw-bytes", f"{D} \\xff \\xc3\\xa9 \\377 a\\x80b")
    b.add("nul-escapes", f"{D} \\x00 \\000 \\u0000 a\\x00b")
    b.add("short-hex", f"{D} \\x4 \\x4g \\u12 \\U0001 \\12")
    b.add("invalid-unicode", f"{D} \\uD800 \\U0000FFFE \\U0000FDD0 \\U00110000 \\uFFFE")
    b.add("empty-args", f'{D} "" \'\' ""\'\' x ""')
    b.add("unicode", f"{D} héllo \"日本語 テキスト\" '€' ß")
    b.add("tabs", f"{D}\ta\t\tb \t c")
    b.add("trailing-ws", f"{D} a b   ")
    b.add("hash-mid-line", f"{D} a #notacomment ;x")
    b.add("backslash-space", f"{D} a\\ b \\  c")
    b.add("trailing-backslash-in-quote", f'{D} "abc\\')
    # -- continuation lines ------------------------------------------------------------
    b.add("continuation", f"{D} a \\\n  b c")
    b.add("continuation-nospace", f"{D} a\\\nb")
    b.add("continuation-comments", f"{D} one \\\n# a comment\n; another\n  two \\\n three")
    b.add("continuation-in-quotes", f'{D} "start \\\n end"')
    b.add("continuation-semicolon", f"{D} a \\\n ; {D} b")
    b.add("continuation-escape", f"{D} a\\\\\n")  # `\\` then newline: not a continuation
    # -- separators ----------------------------------------------------------------------
    b.add("semicolons", f"{D} a ; {D} b ; {D} c")
    b.add("semicolon-literal", f"{D} a \\; b \\;")
    b.add("semicolon-attached", f"{D} a;b ';' \";\" a; ;a")
    b.add("semicolon-leading", f"; {D} lead")
    b.add("semicolon-double", f"{D} a ; ; {D} b")
    b.add("semicolon-trailing", f"{D} a ;")
    b.add("semicolon-escaped-first", f"\\; {D} x")
    b.add("semicolon-quoted-first", f'";" {D} y')
    b.add("semicolon-tab", f"{D} a ;\t{D} b")
    b.add("semicolon-prefixes", f"-{D} a ; @{D} zero b ; :{D} $A")
    # -- $ substitution ------------------------------------------------------------------
    b.add("dollar-dollar", f"{D} $$ $$HOME a$$b '$$' \"$$$$\" $$$")
    b.add("whole-word", f"{D} $A $B $SP $Q $EMPTY $UNSET end")
    b.add("braced", f"{D} ${{A}} ${{B}} ${{SP}} ${{Q}} ${{EMPTY}} ${{UNSET}} end")
    b.add("inside-words", f"{D} x${{B}}y x$By pre${{UNSET}}post a$A ${{A}}${{B}} ${{A}}x")
    b.add("extended", f"{D} ${{A:-default}} ${{UNSET:-default}} ${{A:+alt}} ${{UNSET:+alt}}")
    b.add("bash-only", f"{D} ${{#A}} ${{A[0]}} ${{1}} $1 $(seq $FOO/x $A$B ${{A}}$B")
    b.add("odd-names", f"{D} $_ $_x $A_1 $a-b $ ${{}} ${{A x $9 $@ $*")
    b.add("last-wins", f"{D} $X ${{X}} $GLOB")
    b.add("env-escapes", f"{D} ${{ESC}} $ESC ${{NL}} $NL ${{HEXV}}")
    b.add("env-specifiers", f"{D} ${{PCT}} ${{UNIT}} ${{DOLLAR}} $DOLLAR ${{BR}}")
    b.add("env-invalid", f"{D} ${{1BAD}} $bad-name ${{bad-name}}")
    b.add("quoted-dollar", f"{D} \"$A\" '$B' \"${{B}}\" '${{SP}}'")
    b.add("no-env", f"{D} $A ${{A}} ${{UNSET}} $UNSET x", env=())
    b.add("colon-prefix", f":{D} $A ${{A}} $$ $$$$ ${{UNSET}} $UNSET")
    b.add("colon-at", f":@{D} $A ${{B}}", f"@:{D} $A ${{B}}")
    b.add("at-argv0-env", f"@{D} $A one", f"@{D} ${{B}} two")
    b.add("at-argv0-unset", f"@{D} $UNSET three four")
    b.add("at-argv0-split", f"@{D} $B five")
    b.add("system-vars", f"{D} ${{PATH}} $PATH ${{HOME}} ${{USER}} ${{TERM}} ${{NOTIFY_SOCKET}}")
    b.add("dollar-escape-mix", f"{D} \\x24A \\044{{A}} $\\x41")
    # -- % specifiers -------------------------------------------------------------------
    b.add("percent", f"{D} %% %%s 100%% %%%% '%%' \"%%n\"")
    b.add("percent-odd", f"{D} % a% %! %- %. %/ %é")
    b.add("spec-unit", f"{D} %n %N %p %P %i %I %f %j %J")
    b.add("spec-host", f"{D} %H %l %m %b %v %a")
    b.add("spec-os", f"{D} %o %w %W %B %A %M")
    b.add("spec-user", f"{D} %u %U %g %G %h %s")
    b.add("spec-dirs", f"{D} %t %S %C %L %E %T %V")
    b.add("spec-fragment", f"{D} %y %Y %d")
    b.add("spec-deprecated", f"{D} %c %r %R")
    b.add("spec-in-quotes", f'{D} "%n" \'x%Hy\' "date +%%s"')
    b.add("spec-in-var-name", f"{D} ${{%p}} $%p")
    b.add("spec-D", f"{D} %D")
    b.add("spec-q", f"{D} %q")
    for letter in "kKxXzZFOQe0123456789":
        b.add(f"spec-unknown-{letter}", f"{D} a %{letter}")
    b.add("spec-unknown-dropped", f"-{D} a %k", f"{D} survivor")
    b.add("spec-unknown-colon", f":{D} a %k")
    b.add("spec-bash-trap", f"{D} bash -c 'date +%s; echo %H'")
    b.add("template", f"{D} %i %I %p %P %j %J %f %n %N", instance="a-b\\x2dc")
    b.add("template-empty-ish", f"{D} %i %I %f", instance="x")
    b.add("template-escapes", f"{D} %i %I %f", instance="foo\\x20bar-baz")
    # -- prefixes ----------------------------------------------------------------------
    for prefix in ("-", ":", "+", "!", "!!", "-:", ":-", "-@", "@-", "-+", "+-", "-!!", ":+"):
        extra = " zero" if "@" in prefix else ""
        b.add(f"prefix-{prefix}", f"{prefix}{D}{extra} $A x")
    for bad in ("--", "+!", "!+", "!!!", "|", "::", "@@", "-|"):
        b.add(f"prefix-bad-{bad}", f"{bad}{D} a")
    b.add("at-alone", f"@{D}")
    b.add("at-alone-dash", f"-@{D}", f"{D} ok")
    b.add("at-empty-argv0", f"@{D} '' a")
    # -- executable paths --------------------------------------------------------------
    b.add("path-dot", f"{D.replace('/argvdump', '/./argvdump')} a")
    b.add("path-slashes", f"/{D.replace('specadmin-differential/', 'specadmin-differential//')} a")
    b.add("path-dotdot", f"{D.replace('/argvdump', '/../specadmin-differential/argvdump')} a")
    b.add("path-specifier", "%V/specadmin-differential/argvdump a")
    b.add("path-quoted", f'"{D}" a', f"'{D}' b")
    b.add("path-escape", "\\x2fvar/tmp/specadmin-differential/argvdump a")
    b.add("path-dir", f"{D}/ a")
    b.add("path-relative", "var/tmp/specadmin-differential/argvdump a")
    b.add("path-relative-dash", "-var/tmp/specadmin-differential/argvdump a", f"{D} ok")
    b.add("path-relative-only-dash", "-var/tmp/specadmin-differential/argvdump a")
    b.add("path-dotdot-rel", "../argvdump a")
    # path_simplify() drops `..` at the start of an absolute path (test-path-util.c vectors)
    b.add("path-leading-dotdot", f"/..{D} a")
    b.add("path-leading-dot-dotdot", f"/./.././..{D} a")
    b.add("path-leading-slashes-dotdot", f"////.././///..{D} a")
    b.add(
        "path-leading-dotdot-inner-dotdot",
        f"/..{D.replace('/argvdump', '/../specadmin-differential/argvdump')} a",
    )
    b.add("path-empty-quoted", '"" a')
    b.add("path-control", f"{D}\\x01 a")
    b.add("path-quote-char", f"{D}\\x22 a")
    b.add("path-nul", f"{D}\\x00 a")
    b.add("path-unknown-escape", f"{D}\\q a")
    b.add("path-newline", f"{D}\\n a")
    # -- unbalanced quotes and load failures ------------------------------------------
    b.add("unbalanced-arg", f'{D} "unbalanced')
    b.add("unbalanced-single", f"{D} 'unbalanced x")
    b.add("unbalanced-dash", f'-{D} "unbalanced', f"{D} kept")
    b.add("unbalanced-dash-only", f'-{D} "unbalanced')
    b.add("unbalanced-first", f'"{D} a')
    b.add("unbalanced-first-other", f'"{D} a', f"{D} other")
    b.add("unbalanced-after-semicolon", f"{D} a ; {D} 'b")
    b.add("unbalanced-second-command-dash", f"{D} a ; -{D} 'b")
    b.add("unbalanced-in-continuation", f'{D} "a \\\n b')
    b.add("empty-value-reset", "", f"{D} after-reset")
    b.add("reset-after", f"{D} before", "")
    b.add("only-reset", "")
    b.add("two-lines", f"{D} first", f"{D} second $A")
    # -- User= changes %u %h %s and $USER $HOME $SHELL ---------------------------------
    b.add(
        "user-nobody",
        f"{D} %u %U %g %G %h %s ${{USER}} ${{HOME}} ${{SHELL}} ${{LOGNAME}}",
        extra=("User=nobody",),
    )
    b.add("group-only", f"{D} %u %g %G", extra=("Group=nogroup",))
    login = "${USER} ${LOGNAME} ${HOME} ${SHELL} %u %h %s"
    b.add("login-env-none", f"{D} {login}", env=())
    b.add("login-env-root", f"{D} {login}", env=(), extra=("User=root",))
    b.add("login-env-daemon", f"{D} {login}", env=(), extra=("User=daemon",))
    b.add("login-env-off", f"{D} {login}", env=(), extra=("User=root", "SetLoginEnvironment=no"))
    b.add("login-env-on", f"{D} {login}", env=(), extra=("SetLoginEnvironment=yes",))
    # -- combinations from real units ---------------------------------------------------
    b.add("shell-script", f"{D} /bin/sh -c 'echo \"$$1 ${{A}}\" && date +%%s' sh ${{B}}")
    b.add("vllm-like", f'{D} serve /models/m --speculative-config \'{{"method":"ngram"}}\' $ARGS')
    b.add("json-braced", f'{D} \'{{"a": "${{A}}", "b": [1, 2]}}\'')
    b.add("env-only-space", f"{D} $SP", env=('"SP=   "',))
    b.add("env-quoted-value", f"{D} $V ${{V}}", env=("V='a b' c",))
    b.add("env-value-quotes", f"{D} $V ${{V}}", env=('"V=x \\"y z\\" w"',))
    b.add("env-value-single-in-double", f"{D} $V ${{V}}", env=('"V=it\'s here"',))
    b.add("env-value-backslash", f"{D} $V ${{V}}", env=('"V=a\\\\ b"',))
    b.add("env-value-unbalanced", f"{D} $V ${{V}}", env=("V='unbalanced",))
    b.add("env-value-tab", f"{D} $V ${{V}}", env=('"V=a\\tb\\tc"',))
    b.add("env-reset", f"{D} ${{A}} ${{Z}}", env=("A=1", "", "Z=2"))
    b.add("env-unknown-spec", f"{D} ${{A}} ${{Z}}", env=("A=%k Z=ok",))
    return b.cases


def generated_cases() -> list[Case]:
    """The committed hypothesis-generated cases (see generator.py)."""
    data = json.loads(GENERATED.read_text(encoding="utf-8"))
    return [
        Case(
            c["cid"], tuple(c["execs"]), tuple(c["env"]), origin="generated", note=c.get("note", "")
        )
        for c in data["cases"]
    ]


def all_cases() -> list[Case]:
    return hand_cases() + generated_cases()
