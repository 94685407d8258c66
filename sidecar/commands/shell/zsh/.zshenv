# termkeep shell integration for zsh (docs/commands.md). The sidecar starts an interactive zsh with
# ZDOTDIR pointing at this directory; each file here sources the user's own file of the same name
# with ZDOTDIR as the user had it (the user's code never notices), and .zshrc then adds command
# marks around the user's prompt and hooks. Nothing of the user's is written.

# The nonce first, before any code of the user's runs: read its file and delete it.
if [[ -n ${TERMKEEP_SHELL_NONCE_FILE-} ]]; then
  IFS= builtin read -r __tk_nonce <"$TERMKEEP_SHELL_NONCE_FILE"
  command rm -f -- "$TERMKEEP_SHELL_NONCE_FILE"
fi
builtin unset TERMKEEP_SHELL_NONCE_FILE

__tk_shim=$ZDOTDIR
if (( ${+TERMKEEP_USER_ZDOTDIR} )); then
  export ZDOTDIR=$TERMKEEP_USER_ZDOTDIR
else
  builtin unset ZDOTDIR
fi
builtin unset TERMKEEP_USER_ZDOTDIR

if [[ -r ${ZDOTDIR:-$HOME}/.zshenv ]]; then
  builtin source ${ZDOTDIR:-$HOME}/.zshenv
fi

# Whatever ZDOTDIR is now (the user's .zshenv may set it) is the user's. Only an interactive shell
# that is not a login shell reads our .zshrc next; any other keeps the user's files from here on.
if (( ${+ZDOTDIR} )); then __tk_user_zdotdir=$ZDOTDIR; else builtin unset __tk_user_zdotdir; fi
if [[ -o interactive && ! -o login && -n ${__tk_nonce-} ]]; then
  ZDOTDIR=$__tk_shim
else
  builtin unset __tk_nonce __tk_shim
fi
