"""``nslb completion bash|zsh``: the shell-completion script of ``nslb``.

Overrides are completed by Hydra (``nslb run -sc query=bash``); the presets are offered here,
since Hydra lists no option below a group's subfolders. zsh uses ``bashcompinit``.
"""

from __future__ import annotations

from collections.abc import Sequence

from nslb_cli.common.errors import ConfigError

SHELLS = ("bash", "zsh")

BASH = r"""# nslb shell completion: eval "$(nslb completion bash)"
_nslb_complete() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    if (( COMP_CWORD == 1 )); then
        COMPREPLY=($(compgen -W "__COMMANDS__" -- "$cur"))
        return
    fi
    case ${COMP_WORDS[1]} in
        run|check)
            if [[ $cur == experiment=* ]]; then
                COMPREPLY=($(compgen -W "__PRESETS__" -- "$cur"))
                return
            fi
            # Hydra completes the overrides: give it the words after the subcommand.
            local line="nslb ${COMP_WORDS[*]:2:COMP_CWORD-1}"
            local choices
            choices=$(COMP_LINE="$line" COMP_POINT=${#line} \
                "${COMP_WORDS[0]}" run -sc query=bash 2>/dev/null)
            COMPREPLY=($(compgen -W "$choices" -- "$cur"))
            ;;
        plot)
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "__PLOT_OPTIONS__" -- "$cur"))
            else
                COMPREPLY=($(compgen -d -- "$cur"))
            fi
            ;;
        data)
            COMPREPLY=($(compgen -W "prepare path --json --help" -- "$cur"))
            ;;
        warmup)
            COMPREPLY=($(compgen -W "--engine numpy jax --help" -- "$cur"))
            ;;
        completion)
            COMPREPLY=($(compgen -W "__SHELLS__" -- "$cur"))
            ;;
    esac
}
COMP_WORDBREAKS=${COMP_WORDBREAKS//=}
complete -o nospace -o default -F _nslb_complete nslb
"""

ZSH_PRELUDE = """# nslb shell completion: eval "$(nslb completion zsh)"
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
"""


def script(shell: str, commands: Sequence[str]) -> str:
    """The completion script for ``shell``; ``commands`` are ``nslb``'s subcommands."""
    from nslb_cli.cli.listing import presets
    from nslb_cli.cli.plot import parser

    options = sorted(s for action in parser()._actions for s in action.option_strings)
    bash = (
        BASH.replace("__COMMANDS__", " ".join([*commands, "--help", "--version"]))
        .replace("__PLOT_OPTIONS__", " ".join(options))
        .replace("__SHELLS__", " ".join(SHELLS))
        .replace("__PRESETS__", " ".join(f"experiment={name}" for name in presets()))
    )
    return ZSH_PRELUDE + bash.split("\n", 1)[1] if shell == "zsh" else bash


def main(arguments: Sequence[str]) -> None:
    """Print the script for the one shell named in ``arguments``."""
    from nslb_cli.cli import COMMANDS

    if len(arguments) != 1 or arguments[0] not in SHELLS:
        raise ConfigError("completion", f"name one shell: nslb completion {'|'.join(SHELLS)}")
    print(script(arguments[0], COMMANDS), end="")
