#!/usr/bin/env bash
# run/reproduce.sh: every config of a paper, or of one of its tables/figures,
# with the paper's number of seeds; a wrapper of
# `python -m graphgps_ext.sweep.reproduce` (see its --help).
#
# Usage: run/reproduce.sh <paper> [<table>] [sweep options] [-- KEY VALUE ...]
#        run/reproduce.sh --list [<paper>]
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python}" -m graphgps_ext.sweep.reproduce "$@"
