"""The README's example: export a small model, compile it with aotc, run the package."""
import os
import time

import torch

import aotc


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(10, 16)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(16, 1)
        self.sigmoid = torch.nn.Sigmoid()

    def forward(self, x):
        return self.sigmoid(self.fc2(self.relu(self.fc1(x))))


def main() -> None:
    torch.manual_seed(0)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.pt2")
    with torch.no_grad():
        batch = torch.export.Dim("batch", min=1, max=1024)
        ep = torch.export.export(Model(), (torch.randn(8, 10),), dynamic_shapes={"x": {0: batch}})
        for attempt in ("compiled", "compiled again (build cache)"):
            start = time.perf_counter()
            aotc.compile_and_package(ep, package_path=path)
            print(f"{attempt}: {path} in {time.perf_counter() - start:.2f} s")

    model = aotc.load_package(path)
    for b in (8, 1):
        x = torch.randn(b, 10)
        y = model(x)
        torch.testing.assert_close(y, ep.module()(x))
        print(f"batch {b}: output shape {tuple(y.shape)}, matches eager PyTorch")
        print(y)


if __name__ == "__main__":
    main()
