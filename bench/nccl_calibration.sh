#!/usr/bin/env bash
# The NCCL model against every published nccl-tests table (../shared/calibration/nccl-tests): per table the
# median and maximum |error| of busbw over sizes >= 64 KiB and of time below 64 KiB (docs/nccl.md).
# Usage: bench/nccl_calibration.sh [path/to/fabemu] [-v: print every size]
set -euo pipefail
cd "$(dirname "$0")/.."
FABEMU=${1:-build/host/fabemu}
VERBOSE=${2:-}
DIR=${FABEMU_SHARED_DIR:-../shared}/calibration/nccl-tests
[ -x "$FABEMU" ] || { echo "error: $FABEMU is not built (cmake --build build)" >&2; exit 2; }
[ -d "$DIR" ] || { echo "error: $DIR is absent" >&2; exit 2; }
# table  preset  collective  extra options (the run's own algorithm where the table says it was forced)
cases=(
  "h100_1n8_allreduce_nvls_azure-ndh100v5.tsv h100_8x_nvswitch.yaml all_reduce --algo=nvls"
  "a100_1n8_allreduce_azure-nda100v4.tsv a100_8x_nvswitch.yaml all_reduce"
  "a100_1n8_allreduce_oci-bmgpu48.tsv a100_8x_nvswitch.yaml all_reduce"
  "h100_2n16_allreduce_aws-p5-efa.tsv p5_2node_efa.yaml all_reduce"
  "a100_2n16_allreduce_aws-p4de-efa.tsv p4de_2node_efa.yaml all_reduce"
  "h100_2n16_allgather_gcp-a3mega-tcpxo.tsv a3mega_2node_tcpxo.yaml all_gather"
  "rtx2080ti_1n2_allreduce_pcie-nop2p.tsv pcie_2x_nop2p.yaml all_reduce"
  "rtx2080ti_1n2_allgather_pcie-nop2p.tsv pcie_2x_nop2p.yaml all_gather"
)
printf "%-44s %-26s %s\n" table preset "busbw >= 64 KiB | time < 64 KiB"
for c in "${cases[@]}"; do
  read -r table preset coll extra <<<"$c"
  out=$("$FABEMU" bench collective "$coll" -q -s "traces/systems/$preset" --compare "$DIR/$table" ${extra:+$extra})
  [ "$VERBOSE" = -v ] && echo "$out"
  bus=$(grep '^# busbw' <<<"$out" | sed 's/.*: //')
  tim=$(grep '^# time' <<<"$out" | sed 's/.*: //')
  printf "%-44s %-26s %s | %s\n" "${table%.tsv}" "${preset%.yaml}" "$bus" "$tim"
done
