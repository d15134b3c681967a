# layers.cmake: the layer table holds (tools/check_layers.sh): no #include from a lower folder to a
# higher one, and at most 20 public headers besides the umbrella.
add_test(NAME layers_point_down COMMAND bash ${PROJECT_SOURCE_DIR}/tools/check_layers.sh ${PROJECT_SOURCE_DIR})
