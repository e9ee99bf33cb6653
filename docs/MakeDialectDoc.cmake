# Prepends a note on where the page comes from to the dialect documentation
# that mlir-tblgen generates.
file(READ ${INPUT} BODY)
file(WRITE ${OUTPUT}
"<!-- Generated from the .td files under include/rtx by the build; do not edit.
     Regenerate with: cmake --build build --target rtx-update-docs -->
${BODY}")
