# termkeep shell integration for zsh (see .zshenv here): the user's .zshrc, then the marks.
if (( ${+__tk_user_zdotdir} )); then
  ZDOTDIR=$__tk_user_zdotdir
else
  builtin unset ZDOTDIR
fi
builtin unset __tk_user_zdotdir __tk_shim

if [[ -r ${ZDOTDIR:-$HOME}/.zshrc ]]; then
  builtin source ${ZDOTDIR:-$HOME}/.zshrc
fi

if [[ -n ${__tk_nonce-} ]]; then
  # A value as VS Code's OSC 633 escapes it, into REPLY: `\` → `\\`, `;` and every byte below
  # 0x20 → `\xNN`.
  __tk_escape() {
    emulate -L zsh
    local s=${1//\\/\\\\} hex c i
    s=${s//;/\\x3b}
    if [[ $s == *[$'\x01'-$'\x1f']* ]]; then
      for (( i = 1; i < 32; i++ )); do
        hex=${(l:2::0:)$(( [##16] i ))}
        c=${(#)i}
        s=${s//$c/\\x${(L)hex}}
      done
    fi
    REPLY=$s
  }

  # OSC 7 wants the path as a URL: every byte but unreserved ones and `/` percent-encoded; into REPLY.
  __tk_url_path() {
    emulate -L zsh
    setopt no_multibyte
    local s=$1 out= c i
    for (( i = 1; i <= ${#s}; i++ )); do
      c=$s[i]
      if [[ $c == [A-Za-z0-9/._~-] ]]; then out+=$c; else out+=%${(l:2::0:)$(( [##16] #c ))}; fi
    done
    REPLY=$out
  }

  # When a command line was accepted: the line as typed, then the start of its output. Last of the
  # preexec hooks, so what other hooks print comes before the output.
  __tk_preexec() {
    __tk_ran=1
    __tk_escape "$1"
    builtin printf '\e]633;E;%s;%s\a\e]133;C;tk=%s\a' "$REPLY" "$__tk_nonce" "$__tk_nonce"
  }

  # First of the precmd hooks: the end of the command (only after one ran: an empty line runs
  # nothing) and the directory. zsh gives every hook the command's `$?`.
  __tk_precmd() {
    local status_=$?
    if [[ -n ${__tk_ran-} ]]; then
      builtin printf '\e]133;D;%s;tk=%s\a' "$status_" "$__tk_nonce"
      __tk_ran=
    fi
    if [[ $PWD != ${__tk_cwd-} ]]; then
      __tk_cwd=$PWD
      __tk_escape "$PWD"
      local cwd=$REPLY
      __tk_url_path "$PWD"
      builtin printf '\e]633;P;Cwd=%s;tk=%s\a\e]7;file://%s%s\a' "$cwd" "$__tk_nonce" "$HOST" "$REPLY"
    fi
    # A hook added after ours (a prompt theme loaded late) would redraw PS1 after our wrap.
    if [[ ${precmd_functions[-1]} != __tk_prompt ]]; then
      precmd_functions=(${precmd_functions:#__tk_prompt} __tk_prompt)
    fi
    return $status_
  }

  # Last of the precmd hooks: the prompt's start (once per prompt: PS1 is drawn again on every
  # redisplay, so only the input-start mark is in it), after the user's PS1 as the hooks before
  # left it. PS1 holds the nonce, so it is kept out of the environment of the user's programs.
  __tk_prompt() {
    if [[ -z ${__tk_ps1+x} || $PS1 != $__tk_ps1 ]]; then
      __tk_ps1="$PS1%{$(builtin printf '\e]133;B;tk=%s\a' "$__tk_nonce")%}"
      PS1=$__tk_ps1
      typeset +x PS1
    fi
    builtin printf '\e]133;A;tk=%s\a' "$__tk_nonce"
  }

  precmd_functions=(__tk_precmd ${precmd_functions:#__tk_precmd} __tk_prompt)
  preexec_functions=(${preexec_functions:#__tk_preexec} __tk_preexec)
fi
