#!/usr/bin/env bash
# run/sweep.sh: run configs x seeds locally (CPU or a GPU queue) or as a SLURM
# array job; a wrapper of `python -m graphgps_ext.sweep` (see its --help).
#
# Usage: run/sweep.sh [options] CONFIG|GLOB... [-- KEY VALUE ...]
# The launcher runs with $PYTHON (default python), from this checkout.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python}" -m graphgps_ext.sweep "$@"
