"""`import trainsim`: each function as its command does it (ctest runs this
with PYTHONPATH at the build's python/ folder)."""
import json
import os
import subprocess
import tempfile
import unittest

import trainsim

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLE = os.path.join(ROOT, "configs", "examples", "gpt-1.7b-8xa100.json")
TRAINSIM = os.environ.get("TRAINSIM", os.path.join(ROOT, "build", "trainsim"))


def cli(*args):
    return subprocess.run([TRAINSIM, *args], capture_output=True, text=True)


class Run(unittest.TestCase):
    def test_the_summary_is_the_commands_json(self):
        # The same config through the command and the module: the same figures.
        summary = trainsim.run(EXAMPLE, set={"parallel.schedule": "gpipe"})
        printed = json.loads(cli("run", EXAMPLE, "--set", "parallel.schedule=gpipe", "--json").stdout)
        self.assertEqual(summary["iteration_time_s"], printed["iteration_time_s"])
        self.assertEqual(summary["peak_memory_bytes"], printed["peak_memory_bytes"])

    def test_a_dict_is_read_as_its_json_and_set_takes_values(self):
        with open(EXAMPLE, encoding="utf-8") as f:
            doc = json.load(f)
        from_dict = trainsim.run(doc, set={"parallel.microbatch_size": 2})
        from_file = trainsim.run(EXAMPLE, set={"parallel.microbatch_size": "2"})
        self.assertEqual(from_dict["iteration_time_s"], from_file["iteration_time_s"])

    def test_ops_is_the_commands_layer_ops(self):
        # ops=True adds what --ops --json prints; its rows add up to the layer's forward.
        summary = trainsim.run(EXAMPLE, ops=True)
        printed = json.loads(cli("run", EXAMPLE, "--ops", "--json").stdout)
        self.assertEqual(summary["layer_ops"], printed["layer_ops"])
        layer = summary["layer_ops"]["layer"]
        self.assertAlmostEqual(sum(op["forward"]["seconds"] for op in layer["ops"]), summary["layer_forward_s"], places=12)
        backward = sum(op["input_grad"]["seconds"] + op["weight_grad"]["seconds"] + op["recompute_s"] for op in layer["ops"])
        self.assertAlmostEqual(backward + layer["grad_add_s"], summary["layer_backward_s"], places=12)
        self.assertNotIn("layer_ops", trainsim.run(EXAMPLE))
        with self.assertRaisesRegex(trainsim.ConfigError, "layer table"):
            trainsim.run(os.path.join(ROOT, "configs", "examples", "vgg16-dp-16xa100.json"), ops=True)

    def test_trace_and_svg_are_written(self):
        with tempfile.TemporaryDirectory() as d:
            trainsim.run(EXAMPLE, trace=os.path.join(d, "t.json"), svg=os.path.join(d, "s.svg"))
            with open(os.path.join(d, "t.json"), encoding="utf-8") as f:
                self.assertIn("traceEvents", json.load(f))
            self.assertTrue(os.path.getsize(os.path.join(d, "s.svg")) > 0)

    def test_errors_carry_the_commands_message(self):
        with self.assertRaises(trainsim.ConfigError) as caught:
            trainsim.run(EXAMPLE, set={"parallel.tp": 3})
        message = cli("run", EXAMPLE, "--set", "parallel.tp=3").stderr.strip()
        self.assertEqual("error: " + str(caught.exception), message)
        with self.assertRaises(trainsim.ScheduleError) as caught:
            trainsim.run(EXAMPLE, set={"parallel.schedule": "zb-v"})
        message = cli("run", EXAMPLE, "--set", "parallel.schedule=zb-v").stderr.strip()
        self.assertEqual("error: " + str(caught.exception), message)
        self.assertIn("(the config as changed by --set parallel.schedule=zb-v)", message)
        with self.assertRaises(TypeError):
            trainsim.run(3)

    def test_values_json_cannot_hold_are_config_errors(self):
        with self.assertRaises(trainsim.ConfigError) as caught:
            trainsim.run(EXAMPLE, set={"options.moe_imbalance": float("nan")})
        self.assertIn('set["options.moe_imbalance"]', str(caught.exception))
        with open(EXAMPLE, encoding="utf-8") as f:
            doc = json.load(f)
        doc["parallel"]["microbatch_size"] = float("inf")
        with self.assertRaises(trainsim.ConfigError) as caught:
            trainsim.run(doc)
        self.assertIn("<dict> (config)", str(caught.exception))


class Sweep(unittest.TestCase):
    def test_ranked_results_one_dict_a_plan(self):
        results = trainsim.sweep(os.path.join(ROOT, "configs", "sweeps", "gpt-1.7b-8xa100.json"), jobs=2, top=3)
        self.assertEqual(len(results), 3)
        times = [r["iteration_time_s"] for r in results]
        self.assertEqual(times, sorted(times))
        self.assertIn("tp", results[0])


class Validate(unittest.TestCase):
    def test_the_case_files_comparison(self):
        out = trainsim.validate(os.path.join(ROOT, "tests", "validate_sample", "cases.json"))
        self.assertIn("rows", out)
        self.assertTrue(len(out["rows"]) > 0)


class Presets(unittest.TestCase):
    def test_names_by_kind(self):
        p = trainsim.presets()
        self.assertIn("gpt3-175b", p["model"])
        self.assertIn("dgx-h100", p["node"])


if __name__ == "__main__":
    unittest.main()
