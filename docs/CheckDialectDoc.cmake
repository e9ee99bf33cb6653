# Fails, with the fix in the message, when a checked-in generated doc
# differs from the one the build generates from ODS.
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${GENERATED} ${CHECKED_IN}
                RESULT_VARIABLE different)
if(different)
  message(FATAL_ERROR "${CHECKED_IN} is out of date with the ODS it is generated from; "
                      "regenerate it with: cmake --build build --target rtx-update-docs")
endif()
