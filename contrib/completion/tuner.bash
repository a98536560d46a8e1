# bash completion for tuner(1); `make install` puts it in share/bash-completion/completions/tuner.
# Commands, their options and the values some options take; files where a file is asked for.

_tuner_options()
{
	case $1 in
	run) echo "--generations --population --seed --strategy --jobs --no-gpu --time --evals --gpus --resume --replay --help" ;;
	sweep) echo "--generations --population --seed --jobs --no-gpu --time --evals --gpus --resume --replay --help" ;;
	check) echo "--set --no-compile --jobs --help" ;;
	runs) echo "--json --help" ;;
	show) echo "--run --help" ;;
	top) echo "--k --run --json --help" ;;
	export) echo "--k --run --output -o --format --per-shape --prefix --help" ;;
	cache) echo "--max-size --help" ;;
	serve) echo "--root --gpus --log --heartbeat --batch --jobs --help" ;;
	submit) echo "--priority --root --generations --population --seed --strategy --time --evals --replay --no-gpu --help" ;;
	jobs) echo "--active --json --help" ;;
	cancel) echo "--help" ;;
	wait) echo "--timeout --help" ;;
	esac
}

_tuner()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local globals="--db --config --quiet --verbose --version --help"
	local commands="run sweep check runs show top export cache serve submit jobs cancel wait help"
	local cmd="" i

	# The command is the first word that is neither an option nor an option's value.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--db | --config) ((i++)) ;;
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done

	case $prev in
	--db | --replay | --log)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--root)
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	--config)
		# Files, and the bare names of ./configs/*.yaml
		COMPREPLY=($(compgen -f -- "$cur") $(compgen -W "$(cd configs 2>/dev/null && ls *.yaml 2>/dev/null | sed 's/\.yaml$//')" -- "$cur"))
		return
		;;
	-o | --output)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--format)
		COMPREPLY=($(compgen -W "header json t4" -- "$cur"))
		return
		;;
	--strategy)
		COMPREPLY=($(compgen -W "evolve random exhaustive" -- "$cur"))
		return
		;;
	--generations | --population | --seed | --jobs | --k | --run | --set | --max-size | --gpus | \
		--heartbeat | --batch | --priority | --timeout | --time | --evals)
		return
		;;
	esac

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$globals" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		fi
		return
	fi
	case $cmd in
	help)
		COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		;;
	cache)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$(_tuner_options cache) $globals" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "show prune clear" -- "$cur"))
		fi
		;;
	*)
		COMPREPLY=($(compgen -W "$(_tuner_options "$cmd") --db --config --quiet --verbose" -- "$cur"))
		;;
	esac
}

complete -F _tuner tuner
