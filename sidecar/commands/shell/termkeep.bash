# termkeep shell integration for bash (docs/commands.md). The sidecar starts an interactive bash
# with `--init-file` pointing here instead of ~/.bashrc: this file takes the terminal's nonce,
# sources ~/.bashrc exactly as bash would have, then adds command marks around the user's own
# prompt, PS0 and PROMPT_COMMAND (kept, and run as before). Nothing of the user's is written.

# The nonce first, before any code of the user's runs: read its file and delete it.
if [ -n "${TERMKEEP_SHELL_NONCE_FILE-}" ]; then
	builtin read -r __tk_nonce <"$TERMKEEP_SHELL_NONCE_FILE"
	command rm -f -- "$TERMKEEP_SHELL_NONCE_FILE"
fi
builtin unset TERMKEEP_SHELL_NONCE_FILE

# What bash does for an interactive shell that is not a login shell.
if [ -r ~/.bashrc ]; then
	. ~/.bashrc
fi

# PS0 (bash 4.4) marks the moment a command line was accepted; older shells get no marks.
if [[ -n "${__tk_nonce-}" ]] && ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4))); then

	# A value as VS Code's OSC 633 escapes it, into __tk_escaped (no subshell): `\` → `\\`, `;` and
	# every byte below 0x20 → `\xNN`.
	__tk_escape() {
		builtin local LC_ALL=C s="$1" c hex i
		s=${s//\\/\\\\}
		s=${s//;/\\x3b}
		if [[ $s == *[$'\x01'-$'\x1f']* ]]; then
			for ((i = 1; i < 32; i++)); do
				builtin printf -v hex '%02x' "$i"
				builtin printf -v c "\\x$hex"
				s=${s//"$c"/\\x$hex}
			done
		fi
		__tk_escaped=$s
	}

	# OSC 7 wants the path as a URL: every byte but unreserved ones and `/` percent-encoded.
	__tk_url_path() {
		builtin local LC_ALL=C s="$1" out="" c i
		for ((i = 0; i < ${#s}; i++)); do
			c=${s:i:1}
			case $c in
			[A-Za-z0-9/._~-]) out+=$c ;;
			*) builtin printf -v c '%%%02X' "'$c" && out+=$c ;;
			esac
		done
		__tk_url=$out
	}

	# Runs in PS0's subshell, when a command line was accepted: the command line (from history when
	# this one entered it; HISTCONTROL may keep it out), then the start of the command's output.
	__tk_preexec() {
		builtin local line=''
		if ((HISTCMD > __tk_histcmd)); then
			line=$(builtin fc -ln -0 2>/dev/null)
			line=${line#$'\t'}
			line=${line# }
		fi
		__tk_escape "$line"
		builtin printf '\e]633;E;%s;%s\a\e]133;C;tk=%s\a' "$__tk_escaped" "$__tk_nonce" "$__tk_nonce"
	}

	# First in PROMPT_COMMAND: the end of the command (only after one ran: an empty line runs
	# nothing), the directory, the prompt wrapped again if the user replaced PS1 or PS0, and the
	# prompt's start. Returns the command's status, so the user's PROMPT_COMMAND after it sees `$?`.
	__tk_precmd() {
		builtin local status=$?
		if [[ -n "${__tk_ran-}" ]]; then
			builtin printf '\e]133;D;%s;tk=%s\a' "$status" "$__tk_nonce"
			__tk_ran=
		fi
		if [[ "$PWD" != "${__tk_cwd-}" ]]; then
			__tk_cwd=$PWD
			__tk_escape "$PWD"
			__tk_url_path "$PWD"
			builtin printf '\e]633;P;Cwd=%s;tk=%s\a\e]7;file://%s%s\a' "$__tk_escaped" "$__tk_nonce" "${HOSTNAME-}" "$__tk_url"
		fi
		__tk_histcmd=$HISTCMD
		__tk_wrap
		# Once per prompt (PS1 is drawn again on every redisplay: B only is in it).
		builtin printf '\e]133;A;tk=%s\a' "$__tk_nonce"
		builtin return "$status"
	}

	# The user's PS1 followed by the input-start mark, and PS0 followed by the output-start mark.
	# The nonce is expanded when the prompt is (promptvars), so the variables never hold it.
	__tk_wrap() {
		if [[ -z "${__tk_ps1+x}" || "${PS1-}" != "$__tk_ps1" ]]; then
			__tk_ps1="${PS1-}"'\[\e]133;B;tk=${__tk_nonce}\a\]'
			PS1=$__tk_ps1
		fi
		if [[ -z "${__tk_ps0+x}" || "${PS0-}" != "$__tk_ps0" ]]; then
			__tk_ps0=${PS0-}'${__tk_z[__tk_ran=1]}$(__tk_preexec)'
			PS0=$__tk_ps0
		fi
	}

	__tk_histcmd=$HISTCMD
	__tk_wrap
	if [[ -z "${PROMPT_COMMAND[*]-}" ]]; then
		PROMPT_COMMAND=__tk_precmd
	else
		PROMPT_COMMAND[0]="__tk_precmd"$'\n'"${PROMPT_COMMAND[0]}"
	fi
fi
