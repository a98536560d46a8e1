# Whether a recorded verdict is the one tests/gpu/corpus/expected.tsv asks for (sourced by
# tests/gpu/t-corpus.sh and tests/cli/t0080-corpus.sh).

# corpus_has_all REASON NEEDLES: the reason contains every ;-separated needle
corpus_has_all() {
	_rest=$2
	while :; do
		_needle=${_rest%%;*}
		case $1 in
		*"$_needle"*) ;;
		*) return 1 ;;
		esac
		case $_rest in
		*";"*) _rest=${_rest#*;} ;;
		*) return 0 ;;
		esac
	done
}

# corpus_match OUTCOME REASON OUTCOMES NEEDLES: OUTCOME is one of the |-separated OUTCOMES and
# REASON holds the needles of that alternative (NEEDLES, |-separated in the same order)
corpus_match() {
	_outcomes=$3
	_needles=$4
	while :; do
		if [ "$1" = "${_outcomes%%|*}" ] && corpus_has_all "$2" "${_needles%%|*}"; then
			return 0
		fi
		case $_outcomes in
		*"|"*)
			_outcomes=${_outcomes#*|}
			_needles=${_needles#*|}
			;;
		*) return 1 ;;
		esac
	done
}
