# Sourced by tests/run.sh (the ASan pass) and tests/test_lsan.sh: under
# LeakSanitizer the Vulkan loader loads lavapipe's ICD only, and no implicit
# layer. Why: the loader dlopens every driver in icd.d (radv, anv, hasvk
# beside lavapipe on Debian) and each probes the machine's DRM devices; a
# leak made there (CI's machines: 128 bytes from realloc, never on the dev
# box, which has no /dev/dri) is reported after the loader has unloaded
# that driver, as "<unknown module>", which no suppression can name. The
# tests run on lavapipe either way (CI has no GPU). A choice of drivers
# already made (VK_DRIVER_FILES or VK_ICD_FILENAMES) is kept.
zn_vk_lavapipe_only() {
  [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && return 0
  local f
  for f in /usr/share/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json; do
    if [ -f "$f" ]; then
      export VK_DRIVER_FILES=$f VK_ICD_FILENAMES=$f NODEVICE_SELECT=1
      return 0
    fi
  done
  return 0
}
