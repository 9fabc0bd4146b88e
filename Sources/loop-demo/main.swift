print("loop-demo: scenarios coming")
