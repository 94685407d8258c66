# termkeep shell integration for fish (docs/commands.md). The sidecar starts an interactive fish
# with `--init-command` sourcing this file, after the user's configuration: it takes the
# terminal's nonce and wraps the user's fish_prompt in command marks. Nothing of the user's is
# written.

if set -q TERMKEEP_SHELL_NONCE_FILE
    read -g __tk_nonce <$TERMKEEP_SHELL_NONCE_FILE
    command rm -f -- $TERMKEEP_SHELL_NONCE_FILE
    set -e TERMKEEP_SHELL_NONCE_FILE
end

if test -n "$__tk_nonce"
    # A value as VS Code's OSC 633 escapes it: `\` → `\\`, `;` and control characters → `\xNN`
    # (the rarest ones become `?`: a BEL left raw would end the mark early).
    function __tk_escape
        string replace -a -- '\\' '\\\\' "$argv[1]" | string replace -a -- ';' '\\x3b' \
            | string replace -a -- \n '\\x0a' | string replace -a -- \t '\\x09' | string replace -a -- \r '\\x0d' \
            | string replace -a -- \e '\\x1b' | string replace -a -- \a '\\x07' \
            | string replace -ra -- '[\x01-\x1f]' '?' | string join ''
    end

    function __tk_preexec --on-event fish_preexec
        set -g __tk_ran 1
        printf '\e]633;E;%s;%s\a\e]133;C;tk=%s\a' (__tk_escape "$argv[1]") $__tk_nonce $__tk_nonce
    end

    function __tk_postexec --on-event fish_postexec
        set -l command_status $status
        if set -q __tk_ran[1]
            printf '\e]133;D;%s;tk=%s\a' $command_status $__tk_nonce
            set -e __tk_ran
        end
    end

    function __tk_cwd
        if test "$PWD" != "$__tk_cwd"
            set -g __tk_cwd $PWD
            set -l url (string escape --style=url -- $PWD)
            printf '\e]633;P;Cwd=%s;tk=%s\a\e]7;file://%s%s\a' (__tk_escape $PWD) $__tk_nonce $hostname $url
        end
    end

    # The user's prompt followed by the input-start mark; wrapped again when the user replaces
    # fish_prompt. fish calls fish_prompt on every repaint: only B is in it.
    function __tk_wrap
        if functions -q fish_prompt
            functions -e __tk_user_prompt
            functions -c fish_prompt __tk_user_prompt
        end
        function fish_prompt
            if functions -q __tk_user_prompt
                __tk_user_prompt
            end
            printf '\e]133;B;tk=%s\a' $__tk_nonce
        end
        set -g __tk_wrapped (functions fish_prompt | string join \n)
    end

    # Once per prompt: the directory and the prompt's start.
    function __tk_prompt_start --on-event fish_prompt
        set -l current (functions fish_prompt | string join \n)
        if test "$current" != "$__tk_wrapped"
            __tk_wrap
        end
        __tk_cwd
        printf '\e]133;A;tk=%s\a' $__tk_nonce
    end

    __tk_wrap
end
