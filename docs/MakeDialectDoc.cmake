# Prepends a note on where the page comes from (and, with PREFIX, a
# hand-written section such as the pipelines, which mlir-tblgen does not
# document) to the dialect documentation that mlir-tblgen generates.
file(READ ${INPUT} BODY)
set(HEAD "")
if(PREFIX)
  file(READ ${PREFIX} HEAD)
endif()
file(WRITE ${OUTPUT}
"<!-- Generated from the .td files under include/rtx by the build; do not edit.
     Regenerate with: cmake --build build --target rtx-update-docs -->
${HEAD}${BODY}")
