"""Test generation engines (pure: no lake writes): AST mutants of references (`mutants`), EvalPlus-style type-aware
input mutation and suite reduction (`input_mutation`), LLM-written input generators and validators (`generators`).
The stages that run them and commit their tests are `factory.stages.{mutate,augment,gentests,hidden_tests}`."""
