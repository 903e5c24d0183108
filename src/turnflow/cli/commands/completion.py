"""`turnflow completion bash|zsh|fish`: a shell completion script, generated from
the command's own argument parser (subcommands, options, their choices)."""

from __future__ import annotations

import shlex

from turnflow.cli.util import EXIT_OK, out

SHELLS = ("bash", "zsh", "fish")


def register(sub) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, fish)",
                       description="Print a completion script for your shell: subcommands, options and "
                                   "their values complete with TAB.")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(func=run, subcommands=sub)  # the other subcommands, as registered


def rule_words() -> list[str]:
    """What completes where a rule is named: every code, then every kebab-case name."""
    from turnflow.diagnostics.codes import CODES

    return [c.code for c in CODES] + [c.name for c in CODES]


def commands(sub) -> dict[str, dict]:
    """{subcommand: {"help": str, "options": {flag: [choices] or None (takes a value) or [] (a switch)},
    "words": [what completes a positional argument; empty: file names]}} from the `turnflow`
    parser's subparsers action `sub`. Options whose value is rule codes (metavar CODES) and
    positionals named CODE complete rule codes and names."""
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    result: dict[str, dict] = {}
    for name, sp in sub.choices.items():
        options: dict[str, object] = {}
        words: list[str] = []
        for action in sp._actions:
            if not action.option_strings:
                if str(action.metavar or "").startswith("CODE"):
                    words = rule_words()
                elif action.choices:
                    words = list(action.choices)
                continue
            takes = action.nargs != 0
            value = list(action.choices) if action.choices else (None if takes else [])
            if action.metavar == "CODES":
                value = rule_words()
            for flag in action.option_strings:
                options[flag] = value
        result[name] = {"help": helps.get(name, ""), "options": options, "words": words}
    return result


def bash_script(sub) -> str:
    cmds = commands(sub)
    lines = ["# turnflow completion for bash (turnflow completion bash)", "_turnflow() {",
             '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
             "    if [[ $COMP_CWORD -eq 1 ]]; then",
             f"        COMPREPLY=( $(compgen -W {shlex.quote(' '.join(cmds) + ' --help --version')} -- \"$cur\") )",
             "        return", "    fi", '    local opts="" words=""', '    case "${COMP_WORDS[1]}" in']
    for name, info in cmds.items():
        opts = " ".join(info["options"])
        lines.append(f"        {name})")
        lines.append(f"            opts={shlex.quote(opts)}")
        if info["words"]:
            lines.append(f"            words={shlex.quote(' '.join(info['words']))}")
        value_cases = [(flag, v) for flag, v in info["options"].items() if v]
        if value_cases:
            lines.append('            case "$prev" in')
            for flag, values in value_cases:
                lines.append(f"                {flag}) COMPREPLY=( $(compgen -W {shlex.quote(' '.join(values))} "
                             '-- "$cur") ); return ;;')
            lines.append("            esac")
        lines.append("            ;;")
    lines += ["    esac",
              '    if [[ "$cur" == -* ]]; then',
              '        COMPREPLY=( $(compgen -W "$opts" -- "$cur") )',
              '    elif [[ -n "$words" ]]; then',
              '        COMPREPLY=( $(compgen -W "$words" -- "$cur") )',
              "    else",
              '        COMPREPLY=( $(compgen -f -- "$cur") )',
              "    fi", "}", "complete -o filenames -o bashdefault -F _turnflow turnflow", ""]
    return "\n".join(lines)


def zsh_script(sub) -> str:
    return ("#compdef turnflow\n# turnflow completion for zsh (turnflow completion zsh): the bash completion "
            "through bashcompinit\nautoload -U +X bashcompinit && bashcompinit\n" + bash_script(sub))


def fish_script(sub) -> str:
    cmds = commands(sub)
    names = " ".join(cmds)
    lines = ["# turnflow completion for fish (turnflow completion fish)", "complete -c turnflow -f"]
    for name, info in cmds.items():
        lines.append(f"complete -c turnflow -n 'not __fish_seen_subcommand_from {names}' -a {name} "
                     f"-d {shlex.quote(info['help'])}")
    for name, info in cmds.items():
        for flag, values in info["options"].items():
            if flag.startswith("--"):
                spec = f"-l {flag[2:]}"
            elif len(flag) == 2:
                spec = f"-s {flag[1]}"
            else:
                spec = f"-o {flag[1:]}"
            arg = ""
            if values:
                arg = f" -xa {shlex.quote(' '.join(values))}"
            elif values is None:
                arg = " -r -F"
            lines.append(f"complete -c turnflow -n '__fish_seen_subcommand_from {name}' {spec}{arg}")
        if info["words"]:
            lines.append(f"complete -c turnflow -n '__fish_seen_subcommand_from {name}' -xa "
                         f"{shlex.quote(' '.join(info['words']))}")
        else:
            lines.append(f"complete -c turnflow -n '__fish_seen_subcommand_from {name}' -F")
    return "\n".join(lines) + "\n"


def run(args) -> int:
    out({"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell](args.subcommands))
    return EXIT_OK
