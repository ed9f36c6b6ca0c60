#!/bin/sh
# What decides whether this host's NVIDIA GPUs are usable, one fact per line:
#   kernel RELEASE               the running kernel (uname -r)
#   gpu ADDRESS DRIVER           an NVIDIA (vendor 0x10de) display or 3D controller (PCI class 0x03xxxx)
#                                and the driver bound to it ("none" when no driver is bound)
#   module loaded|probed|absent  the nvidia module: loaded before, loaded now by modprobe, not loaded
#   version VERSION              the loaded module's version (<sysfs>/module/nvidia/version)
#   installed VERSION            the module modprobe would load for this kernel (modinfo), when none is loaded
#   modprobe LINE                what modprobe said when it was tried and the module did not load
#   dkms LINE                    what dkms status says about the nvidia modules, when none is loaded
# Usage: nvidia_gpu_state.sh SYSFS_ROOT PROC_ROOT yes|no   (yes: try modprobe nvidia once when
# GPUs are present and the module is not loaded). Reads only, apart from that modprobe.
sys=${1:-/sys}
proc=${2:-/proc}
try=${3:-no}

# Every non-empty line of $2 as "$1 LINE".
tagged() {
  printf '%s\n' "$2" | sed -e '/^[[:space:]]*$/d' -e "s/^/$1 /"
}

loaded() {
  [ -d "$sys/module/nvidia" ] || grep -q '^nvidia ' "$proc/modules" 2>/dev/null
}

# The NVIDIA GPUs' sysfs directories, one a line.
gpu_devices() {
  for dev in "$sys"/bus/pci/devices/*; do
    if [ ! -r "$dev/vendor" ] || [ ! -r "$dev/class" ]; then continue; fi
    [ "$(cat "$dev/vendor")" = 0x10de ] || continue
    # Display controllers: VGA 0x0300, 3D 0x0302 (data centre GPUs), other 0x0380. NVSwitches
    # (0x0680) and the audio and USB functions of some boards are not GPUs.
    case "$(cat "$dev/class")" in 0x03*) echo "$dev" ;; esac
  done
}

echo "kernel $(uname -r)"
gpus=$(gpu_devices)

state=absent
if loaded; then
  state=loaded
elif [ "$try" = yes ] && [ -n "$gpus" ]; then
  if command -v modprobe >/dev/null 2>&1; then
    said=$(modprobe nvidia 2>&1)
    rc=$?
    if loaded; then
      state=probed
    elif [ -n "$said" ]; then
      tagged modprobe "$said"
    elif [ "$rc" = 0 ]; then
      echo "modprobe modprobe nvidia succeeded but $sys/module/nvidia did not appear"
    else
      echo "modprobe modprobe nvidia exited $rc without saying why"
    fi
  else
    echo "modprobe modprobe is not installed (kmod): the module could not be loaded"
  fi
fi
echo "module $state"

# After modprobe: a module that loads binds the GPUs it can drive.
gpu_devices | while IFS= read -r dev; do
  driver=none
  if [ -L "$dev/driver" ]; then
    driver=$(readlink "$dev/driver")
    driver=${driver##*/}
  fi
  echo "gpu ${dev##*/} $driver"
done

if [ -r "$sys/module/nvidia/version" ]; then
  echo "version $(cat "$sys/module/nvidia/version")"
fi
if [ "$state" = absent ]; then
  installed=$(modinfo -F version nvidia 2>/dev/null) || installed=""
  [ -n "$installed" ] && echo "installed $installed"
  if command -v dkms >/dev/null 2>&1; then
    status=$(dkms status 2>&1)
    case "$status" in
      *nvidia*) tagged dkms "$(printf '%s\n' "$status" | grep -i nvidia)" ;;
      *) echo "dkms status lists no nvidia module" ;;
    esac
  fi
fi
exit 0
