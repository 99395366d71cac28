# opweave_set_warnings(<target>): the project's warning flags, applied per
# target so that nothing warning-related leaks into the exported interface.
function(opweave_set_warnings target)
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4)
    if(OPWEAVE_WERROR)
      target_compile_options(${target} PRIVATE /WX)
    endif()
  else()
    target_compile_options(${target} PRIVATE
      -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Woverloaded-virtual -Wcast-align -Wformat=2)
    if(OPWEAVE_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
endfunction()
