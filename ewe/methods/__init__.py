"""Baseline methods built on the same parts as EWE (the generator, its plain decoding,
the retrieval datastore, the trace), so that they run through the same `EWE.generate()`
and `ewe run`, selected by the configuration's `method`, and compare like for like.

    registry.py      the methods by name, the Method base class and the request rows hand to it
    ewe.py           EWE itself: plain decoding, or each prompt through the controller
                     (ewe/controller/); its settings are the configuration's `controller` section
    cove.py          CoVe (Chain-of-Verification), factor+revise, with or without retrieval
    cove_prompts.py  its prompt templates and the parsers for their answers
    verify_refine.py Streaming-VR (verify each sentence as it completes, refine it in place)
                     and Full-VR (verify the whole answer, refine it whole)
    vr_prompts.py    the refiner's prompt templates and the parser of its replies
    a2r.py           A2R, Ask-Assess-Refine: cite, score (correctness, citation recall and
                     precision), feed back, refine
    a2r_prompts.py   its prompts, template feedback and citation parser
    calls.py         one plain model call, as the baselines' stages make them
"""
