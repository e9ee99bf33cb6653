# Fails, with the fix in the message, when the checked-in docs/dialect.md
# differs from the one the build generates from ODS.
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${GENERATED} ${CHECKED_IN}
                RESULT_VARIABLE different)
if(different)
  message(FATAL_ERROR "docs/dialect.md is out of date with the ops' ODS; "
                      "regenerate it with: cmake --build build --target rtx-update-docs")
endif()
